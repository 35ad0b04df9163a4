"""The networks the dataset measures as targets only (issue 26): more kernels and shapes to
learn from without tuning; no log of theirs is a source, and the evaluation never holds them
out. Loaded through the ``tv:`` and ``hf:`` routes (the ``zoo`` extra)."""

# Each with the zoo family it belongs to (the pair feature ``p_same_family``). Measured in this
# order: the seven transformers first (their pools are small, 150-200 candidates for BERT, where a
# convolutional network has 1000-4000, and the zoo has only two), then the classifiers.
TRAINING_TARGETS = {
    "hf:distilbert-base-uncased": "bert",
    "hf:roberta-base": "bert",
    "hf:albert-base-v2": "bert",
    "hf:electra-small-discriminator": "bert",
    "hf:squeezebert-uncased": "bert",
    "hf:gpt2": "gpt",
    "tv:vit_b_16": "vit",
    "tv:resnet34": "resnet",
    "tv:resnet101": "resnet",
    "tv:resnext50_32x4d": "resnet",
    "tv:wide_resnet50_2": "resnet",
    "tv:densenet121": "densenet",
    "tv:vgg11": "vgg",
    "tv:squeezenet1_1": "squeezenet",
    "tv:inception_v3": "inception",
    "tv:mobilenet_v3_large": "mobilenet",
    "tv:mobilenet_v3_small": "mobilenet",
    "tv:shufflenet_v2_x1_0": "shufflenet",
    "tv:mnasnet0_5": "mnasnet",
    "tv:efficientnet_b2": "efficientnet",
    "tv:regnet_y_400mf": "regnet",
    "tv:regnet_x_1_6gf": "regnet",
    "tv:convnext_tiny": "convnext",
}
