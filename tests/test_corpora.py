"""Which corpus a command uses: the target CPU's own, else the closest of its architecture,
else an error; --corpus and RECOMMENDER_HOME override. The fake corpora here are provenances."""

import json

import pytest
import tvm

from recommender.cli.main import main
from recommender.core import configuration
from recommender.core.configuration import Configuration
from recommender.core.corpora import SOURCE_NETWORKS, choose, closeness, find_corpora
from recommender.core.errors import InputError


def llvm(cpu: str, triple: str = "") -> tvm.target.Target:
    config = {"kind": "llvm", "mcpu": cpu, "num-cores": 2}
    return tvm.target.Target(config | ({"mtriple": triple} if triple else {}))


def fake_corpus(base, name, cpu, arch="x86_64", networks=("resnet18",)):
    for network in networks:
        log = base / name / "datasets" / "logs" / network
        log.mkdir(parents=True)
        provenance = {
            "network": network,
            "target_key": {"kind": "llvm", "mtriple": "", "mcpu": cpu, "num-cores": 2},
            "machine": {"cpu": cpu, "arch": arch},
            "budget": {"trials_per_task": 64},
        }
        (log / "provenance.json").write_text(json.dumps(provenance))
    return base / name


@pytest.fixture
def base(tmp_path, monkeypatch):
    monkeypatch.delenv("RECOMMENDER_HOME", raising=False)
    fake_corpus(tmp_path, "znver3", "znver3", networks=("resnet18", "vgg16"))
    fake_corpus(tmp_path, "rocketlake", "rocketlake")
    fake_corpus(tmp_path, "a72", "cortex-a72", arch="aarch64")
    return tmp_path


def test_corpora_are_described_from_their_logs(base):
    found = {c.name: c for c in find_corpora(base)}
    assert set(found) == {"znver3", "rocketlake", "a72"}
    assert found["znver3"].cpu == "znver3" and found["znver3"].networks == ("resnet18", "vgg16")
    assert found["a72"].arch == "aarch64" and not found["a72"].has_model


def test_the_target_cpus_own_corpus_wins(base):
    choice = choose(llvm("rocketlake"), base=base)
    assert choice.corpus.name == "rocketlake" and choice.exact


def test_without_one_the_closest_cpu_of_the_architecture_serves(base):
    assert closeness("znver4", "znver3") > closeness("znver4", "rocketlake")
    choice = choose(llvm("znver4"), base=base)
    assert choice.corpus.name == "znver3" and not choice.exact
    assert "closest" in choice.why and "znver4" in choice.why


def test_another_architecture_is_an_error_that_says_how_to_tune_one(base):
    target = llvm("neoverse-n1", "aarch64-linux-gnu")
    assert choose(target, base=base).corpus.name == "a72"  # aarch64 has one
    with pytest.raises(InputError, match="rebuild_corpus"):
        choose(llvm("pwr9", "powerpc64le-linux-gnu"), base=base)


def test_an_explicit_corpus_or_recommender_home_overrides(base, monkeypatch):
    assert choose(llvm("znver4"), "rocketlake", base=base).corpus.name == "rocketlake"
    monkeypatch.setenv("RECOMMENDER_HOME", str(base / "rocketlake"))
    assert choose(llvm("znver3"), base=base).why == "given by RECOMMENDER_HOME"
    with pytest.raises(InputError, match="no corpus 'nope'; corpora here: a72, rocketlake"):
        choose(llvm("znver3"), "nope", base=base)


def test_measuring_commands_write_to_the_target_cpus_own_corpus(base):
    choice = choose(llvm("znver4"), writing=True, base=base)
    assert choice.corpus.root == base / "znver4" and choice.exact


def test_the_corpora_command_lists_them_and_the_hosts_choice(capsys, monkeypatch):
    monkeypatch.delenv("RECOMMENDER_HOME")  # the suite's own empty corpus
    assert main(["corpora", "--json", "--target", "llvm -mcpu=rocketlake -num-cores=2"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {"znver3", "rocketlake"} <= {c["name"] for c in listed["corpora"]}
    assert listed["chosen"] == "rocketlake" and listed["target_cpu"] == "rocketlake"


def test_a_corpus_still_being_tuned_gives_way_to_one_with_a_cost_model(base):
    fake_corpus(base, "znver4", "znver4")  # its first log, no dataset or model yet
    model = base / "znver3" / "models" / "default"
    model.mkdir(parents=True)
    (model / "metadata.json").write_text("{}")
    choice = choose(llvm("znver4"), base=base)
    assert choice.corpus.name == "znver3" and not choice.exact
    assert choice.why.startswith("znver4's own corpus is not complete (1 networks, no cost model")
    assert choose(llvm("znver4"), writing=True, base=base).corpus.name == "znver4"


def test_on_another_cpu_a_corpus_of_most_of_the_zoo_serves_ranked_by_the_pooled_model(base):
    zoo = [f"network{i}" for i in range(SOURCE_NETWORKS)]
    fake_corpus(base, "znver4", "znver4", networks=zoo)  # its logs, no dataset or model
    fake_corpus(base, "znver4-begun", "znver4")  # the same CPU, fewer logs
    fake_corpus(base, "znver5", "znver5")  # this CPU's own, just begun
    for model in (base / "znver3" / "models" / "default", base / "pooled"):
        model.mkdir(parents=True)
        (model / "metadata.json").write_text("{}")
    choice = choose(llvm("znver5"), base=base, pooled=base / "pooled")
    assert choice.corpus.name == "znver4" and not choice.exact
    assert choice.model == base / "pooled"
    assert choice.why.startswith("znver5's own corpus is not complete")
    without = choose(llvm("znver5"), base=base, pooled=base / "no pooled model")
    assert without.corpus.name == "znver4"  # the closest CPU's logs still serve,
    assert without.model == base / "znver3" / "models" / "default"  # ranked by a native model


def model_of(base, corpus, trained_on=None):
    """A saved model's metadata, naming the dataset it was trained on."""
    model = base / corpus / "models" / "default"
    model.mkdir(parents=True)
    dataset = base / (trained_on or corpus) / "datasets" / "transfer"
    (model / "metadata.json").write_text(json.dumps({"training_data": {"directory": str(dataset)}}))
    return model


def test_a_model_trained_on_the_corpus_configuration_ranks_where_it_has_none(base):
    for name in ("znver4", "znver5"):  # both blocked; only the Zen 5's has a model
        configuration.configure(base / name, layout="NCHW16c", fast_math=True)
        fake_corpus(base, name, name, networks=[f"network{i}" for i in range(SOURCE_NETWORKS)])
    blocked = model_of(base, "znver5")
    pooled = model_of(base, "pooled", trained_on="znver3")  # native networks
    on_zen4 = choose(llvm("znver4"), base=base, pooled=pooled)
    assert on_zen4.corpus.name == "znver4" and on_zen4.exact  # its own logs, 10 networks
    assert on_zen4.model == blocked and "no cost model of its own yet" in on_zen4.why
    native = choose(llvm("znver4"), "znver3", base=base, pooled=pooled)
    assert native.model == pooled  # a native corpus elsewhere: the model of every corpus
    assert choose(llvm("znver5"), base=base, pooled=pooled).model == blocked  # its own


def test_a_corpus_given_without_a_model_of_its_own_ranks_with_the_pooled_model(base):
    fake_corpus(base, "mine", "znver5")  # e.g. the user's own logs, imported
    (base / "pooled").mkdir()
    (base / "pooled" / "metadata.json").write_text("{}")
    choice = choose(llvm("znver5"), "mine", base=base, pooled=base / "pooled")
    assert choice.exact and choice.model == base / "pooled"


def test_a_corpus_keeps_the_configuration_it_prepares_networks_by(base):
    assert configuration.read(base / "znver3") == Configuration()  # no corpus.json: the paper's
    configuration.configure(base / "blocked", layout="NCHW16c")  # a new corpus
    configuration.configure(base / "blocked", fast_math=True)  # still without logs
    assert configuration.read(base / "blocked") == Configuration("NCHW16c", fast_math=True)
    with pytest.raises(InputError, match="configuration is native, not NCHW16c"):
        configuration.configure(base / "znver3", layout="NCHW16c")  # its logs are native
    configuration.configure(base / "znver3", layout="native")  # what it is: harmless
    with pytest.raises(InputError, match="unknown layout 'NHWC'"):
        configuration.configure(base / "new", layout="NHWC")
    (base / "blocked" / "corpus.json").write_text('{"layout": "NCHW16c", "fast": true}')
    with pytest.raises(InputError, match="blocked/corpus.json: not a corpus configuration"):
        configuration.read(base / "blocked")


def test_a_cpus_corpus_in_another_configuration_is_a_variant_chosen_by_name(base):
    for name in ("rocketlake", "rocketlake-nchw16c"):
        if name != "rocketlake":
            configuration.configure(base / name, layout="NCHW16c")
            fake_corpus(base, name, "rocketlake")
        (base / name / "models" / "default").mkdir(parents=True)
        (base / name / "models" / "default" / "metadata.json").write_text("{}")
    assert choose(llvm("rocketlake"), base=base).corpus.name == "rocketlake"
    variant = choose(llvm("rocketlake"), "rocketlake-nchw16c", base=base).corpus
    assert variant.configuration.layout == "NCHW16c" and variant.cpu == "rocketlake"
    made = choose(llvm("znver4"), "znver4-nchw8c", writing=True, base=base).corpus
    assert made.root == base / "znver4-nchw8c"  # a bare name is made under corpora/
