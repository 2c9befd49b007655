"""Datasets: fake ones of the right layout, ImageNet and ImageNetV2 prepared from their archives, and checks."""
