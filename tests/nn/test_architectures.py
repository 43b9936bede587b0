"""Compact architectures in the style of torchvision's and pytorch/examples' (ResNet, MobileNetV3,
ShuffleNetV2, DenseNet, a DCGAN generator and discriminator, a fast-neural-style transformer, a
segmentation head with interpolate), written once against `T` and built with T = torch and T = scriptc:
forward and backward agree in float64 in train and eval mode with torch's weights loaded, every
parameter gets its gradient, and trace, script and the frozen, optimized script reproduce the eager
forward."""

from __future__ import annotations

from typing import List

import numpy as np
import pytest

import scriptc

from .differential import compare_layer

torch = pytest.importorskip("torch")


def resnet(T):
    nn = T.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.downsample(x)
            return self.relu(out)

    return nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                         nn.MaxPool2d(3, 2, 1), BasicBlock(8, 16, 2), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1),
                         nn.Linear(16, 5))


def mobilenet_v3(T):
    nn, F = T.nn, T.nn.functional

    class SqueezeExcitation(nn.Module):
        def __init__(self, channels, squeeze):
            super().__init__()
            self.fc1 = nn.Conv2d(channels, squeeze, 1)
            self.fc2 = nn.Conv2d(squeeze, channels, 1)
            self.relu = nn.ReLU()
            self.scale = nn.Hardsigmoid()

        def forward(self, x):
            s = F.adaptive_avg_pool2d(x, 1)
            return x * self.scale(self.fc2(self.relu(self.fc1(s))))

    return nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8, eps=0.001, momentum=0.01),
                         nn.Hardswish(), nn.Conv2d(8, 8, 3, 1, 1, groups=8, bias=False), nn.BatchNorm2d(8),
                         nn.ReLU6(inplace=True), SqueezeExcitation(8, 4), nn.Conv2d(8, 12, 1, bias=False),
                         nn.BatchNorm2d(12), nn.AdaptiveAvgPool2d(1), nn.Flatten(1), nn.Linear(12, 10),
                         nn.Hardswish(inplace=True), nn.Dropout(0.2, inplace=True), nn.Linear(10, 3))


def shufflenet(T):
    nn = T.nn

    class Shuffle(nn.Module):
        def forward(self, x):
            n, c, h, w = x.size()
            x = x.view(n, 2, c // 2, h, w)
            x = T.transpose(x, 1, 2).contiguous()
            return x.view(n, -1, h, w)

    class Unit(nn.Module):
        def __init__(self, channels):
            super().__init__()
            half = channels // 2
            self.branch = nn.Sequential(nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(True),
                                        nn.Conv2d(half, half, 3, 1, 1, groups=half, bias=False),
                                        nn.BatchNorm2d(half), nn.Conv2d(half, half, 1, bias=False),
                                        nn.BatchNorm2d(half), nn.ReLU(True))
            self.shuffle = Shuffle()

        def forward(self, x):
            a, b = x.chunk(2, dim=1)
            return self.shuffle(T.cat((a, self.branch(b)), 1))

    return nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), Unit(8), nn.ChannelShuffle(2), Unit(8), nn.AvgPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 4 * 4, 4))


def densenet(T):
    nn, F = T.nn, T.nn.functional

    class DenseLayer(nn.Module):
        def __init__(self, cin, growth):
            super().__init__()
            self.norm1 = nn.BatchNorm2d(cin)
            self.relu1 = nn.ReLU(inplace=True)
            self.conv1 = nn.Conv2d(cin, growth, 1, bias=False)
            self.norm2 = nn.BatchNorm2d(growth)
            self.conv2 = nn.Conv2d(growth, growth, 3, 1, 1, bias=False)

        def forward(self, features: List[T.Tensor]):
            x = self.conv1(self.relu1(self.norm1(T.cat(features, 1))))
            return self.conv2(F.relu(self.norm2(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = DenseLayer(6, 4)
            self.layer2 = DenseLayer(10, 4)

        def forward(self, x):
            features = [x]
            features.append(self.layer1(features))
            features.append(self.layer2(features))
            return T.cat(features, 1)

    return nn.Sequential(nn.Conv2d(3, 6, 3, 1, 1), Block(), nn.BatchNorm2d(14), nn.ReLU(),
                         nn.AvgPool2d(kernel_size=2, stride=2), nn.AdaptiveMaxPool2d((2, 2)), nn.Flatten(),
                         nn.Linear(56, 3))


def dcgan_generator(T):
    nn = T.nn
    nz, ngf = 6, 4
    return nn.Sequential(nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4),
                         nn.ReLU(True), nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                         nn.BatchNorm2d(ngf * 2), nn.ReLU(True), nn.ConvTranspose2d(ngf * 2, 3, 4, 2, 1, bias=False),
                         nn.Tanh())


def dcgan_discriminator(T):
    nn = T.nn
    ndf = 4
    return nn.Sequential(nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                         nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
                         nn.LeakyReLU(0.2, inplace=True), nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid(),
                         nn.Flatten(0))


def style_transformer(T):
    nn = T.nn

    class ConvLayer(nn.Module):
        def __init__(self, cin, cout, kernel, stride, upsample=None):
            super().__init__()
            self.upsample = upsample
            self.pad = nn.ReflectionPad2d(kernel // 2)
            self.conv = nn.Conv2d(cin, cout, kernel, stride)

        def forward(self, x):
            if self.upsample:
                x = T.nn.functional.interpolate(x, mode="nearest", scale_factor=self.upsample)
            return self.conv(self.pad(x))

    return nn.Sequential(ConvLayer(3, 4, 3, 1), nn.InstanceNorm2d(4, affine=True), nn.ReLU(), ConvLayer(4, 6, 3, 2),
                         nn.InstanceNorm2d(6, affine=True), nn.ReLU(), ConvLayer(6, 4, 3, 1, upsample=2),
                         nn.InstanceNorm2d(4, affine=True), nn.ReLU(), ConvLayer(4, 3, 3, 1))


def segmentation_head(T):
    nn, F = T.nn, T.nn.functional

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 6, 3, 2, 1), nn.GroupNorm(2, 6), nn.SiLU(inplace=True),
                                          nn.Conv2d(6, 6, 3, 2, 1, dilation=1), nn.GELU())
            self.classifier = nn.Sequential(nn.Conv2d(6, 6, 3, padding=2, dilation=2), nn.BatchNorm2d(6),
                                            nn.Mish(), nn.Dropout2d(0.1), nn.Conv2d(6, 3, 1))

        def forward(self, x):
            size = x.shape[-2:]
            y = self.classifier(self.backbone(x))
            return F.interpolate(y, size=size, mode="bilinear", align_corners=False)

    return Head()


MODELS = {"resnet": (resnet, (2, 3, 32, 32)), "mobilenet_v3": (mobilenet_v3, (2, 3, 16, 16)),
          "shufflenet": (shufflenet, (2, 3, 16, 16)), "densenet": (densenet, (2, 3, 8, 8)),
          "dcgan_generator": (dcgan_generator, (2, 6, 1, 1)), "dcgan_discriminator": (dcgan_discriminator, (2, 3, 16, 16)),
          "style_transformer": (style_transformer, (1, 3, 12, 12)), "segmentation_head": (segmentation_head, (2, 3, 16, 16))}


def _without_dropout(build):
    """The model with dropout off (p = 0): the two libraries draw different masks."""
    def built(T):
        model = build(T)
        for module in model.modules():
            if "Dropout" in type(module).__name__:
                module.p = 0.0
        return model
    return built


@pytest.mark.parametrize("name", MODELS)
def test_model_matches_torch_forward_and_backward(name):
    build, shape = MODELS[name]
    x = np.random.default_rng(0).standard_normal(shape)
    ours, _ = compare_layer(torch, _without_dropout(build), x, rtol=1e-7, atol=1e-8)
    ours.train()
    ours.zero_grad()
    ours(scriptc.tensor(x)).sum().backward()
    assert [k for k, p in ours.named_parameters() if p.grad is None] == []


@pytest.mark.parametrize("name", list(MODELS))
def test_model_traces_and_scripts_like_eager(name):
    build, shape = MODELS[name]
    model = build(scriptc).eval()
    x = scriptc.tensor(np.random.default_rng(1).standard_normal(shape).astype(np.float32))
    expected = model(x).detach().numpy()
    np.testing.assert_allclose(scriptc.jit.trace(model, (x,))(x).detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    scripted = scriptc.jit.script(model)
    np.testing.assert_allclose(scripted(x).detach().numpy(), expected, rtol=1e-4, atol=1e-5)
    # frozen and optimized with no example inputs: every group compiles for the shapes its first call brings
    fast = scriptc.jit.optimize_for_inference(scriptc.jit.freeze(scripted))
    np.testing.assert_allclose(fast(x).detach().numpy(), expected, rtol=1e-4, atol=1e-5)
