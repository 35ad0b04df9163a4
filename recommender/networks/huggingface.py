"""Hugging Face encoders by name (``hf:bert-base-uncased``), built offline with random weights.

Nothing is downloaded at run time: each known name maps to its published configuration, written
out here (``transformers.AutoConfig.for_model`` plus the fields that differ from the model
type's defaults), and the model is built from it with random weights, as the zoo does. Schedules
depend on shapes, not on weights. The model goes to Relax through torch.export, the route that
imports transformers' attention without ONNX's shape arithmetic. Needs the ``zoo`` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import InputError

if TYPE_CHECKING:
    import torch

PREFIX = "hf:"
DEFAULT_SEQ_LEN = 128

_BERT_LARGE = {
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 4096,
}
_ROBERTA = {
    "vocab_size": 50265,
    "max_position_embeddings": 514,
    "type_vocab_size": 1,
    "layer_norm_eps": 1e-5,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
}

# name on the hub (without its organisation) -> (model type, fields differing from its defaults)
KNOWN: dict[str, tuple[str, dict]] = {
    "bert-base-uncased": ("bert", {}),
    "bert-base-cased": ("bert", {"vocab_size": 28996}),
    "bert-large-uncased": ("bert", _BERT_LARGE),
    "distilbert-base-uncased": ("distilbert", {}),
    "roberta-base": ("roberta", _ROBERTA),
    "albert-base-v2": (
        "albert",
        {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072},
    ),
    "mobilebert-uncased": ("mobilebert", {}),
    "electra-small-discriminator": (
        "electra",
        {
            "embedding_size": 128,
            "hidden_size": 256,
            "num_attention_heads": 4,
            "intermediate_size": 1024,
        },
    ),
    "squeezebert-uncased": ("squeezebert", {}),
    "gpt2": ("gpt2", {}),
}


def is_hf_name(spec: str) -> bool:
    return spec.startswith(PREFIX)


def known_name(spec: str) -> str:
    """``hf:google/mobilebert-uncased`` -> ``mobilebert-uncased``; an unknown one lists KNOWN."""
    name = spec.removeprefix(PREFIX).rsplit("/", 1)[-1]
    if name not in KNOWN:
        raise InputError(
            f"unknown Hugging Face model {spec!r}: only configurations known offline can be "
            f"built; choose one of: {', '.join(PREFIX + known for known in KNOWN)}"
        )
    return name


def export_program(spec: str, *, seq_len: int = DEFAULT_SEQ_LEN) -> torch.export.ExportedProgram:
    """The model ``spec`` (``hf:NAME``) with seeded random weights, exported at batch 1.

    Its one input is ``input_ids`` of shape ``(1, seq_len)``; its output the last hidden state.
    """
    import torch

    model, ids = torch_module(spec, seq_len=seq_len)
    return torch.export.export(model, (ids,))


def torch_module(
    spec: str, *, seq_len: int = DEFAULT_SEQ_LEN
) -> tuple[torch.nn.Module, torch.Tensor]:
    """The model ``spec`` in inference mode (seeded random weights) and its ``input_ids``."""
    name = known_name(spec)
    try:
        import torch

        from .torch_compat import define_torchvision_schemas

        define_torchvision_schemas()
        import transformers
    except ImportError:
        raise InputError(f"{spec} needs torch and transformers: pip install '.[zoo]'") from None
    model_type, fields = KNOWN[name]
    config = transformers.AutoConfig.for_model(model_type, **fields)
    limit = config.max_position_embeddings  # GPT-2 maps it to n_positions
    if seq_len > limit:
        raise InputError(f"--seq-len of {spec} must be at most {limit}. Got {seq_len} instead.")
    torch.manual_seed(0)
    model = _last_hidden_state(transformers.AutoModel.from_config(config), torch)
    ids = torch.randint(0, min(config.vocab_size, 1000), (1, seq_len), dtype=torch.int64)
    return model, ids


def _last_hidden_state(model, torch) -> torch.nn.Module:
    """Names the input ``input_ids`` and returns one tensor instead of transformers' dataclass.

    Defined here because torch is imported only when a model is built.
    """

    class LastHiddenState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return self.model(input_ids).last_hidden_state

    return LastHiddenState().eval()
