"""The architectures benchmarks/models.py times, each written once against a torch-like namespace `T`
(real torch, or scriptc as torch): the MLP and small CNN, the pytorch/examples models (mnist CNN, VAE,
time-sequence LSTMCell, word-language-model LSTM, DCGAN generator and discriminator, super-resolution)
and ResNet-18, MobileNetV2 and SqueezeNet 1.1 from their published definitions (torchvision's).

Each entry: name, make(T) -> module, inputs(rng) -> numpy arrays, and the scriptc names it needs (a
row is skipped, with a note, while scriptc lacks one of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Model:
    name: str
    make: Callable
    inputs: Callable
    needs: tuple[str, ...] = ()
    dtype: str = "float32"
    batch_dim: int = 0   # the dim of the first input a new size grows (benchmarks/models.py's first calls)
    notes: list[str] = field(default_factory=list)


def mlp(T):
    return T.nn.Sequential(T.nn.Linear(784, 512), T.nn.ReLU(), T.nn.Linear(512, 512), T.nn.ReLU(),
                           T.nn.Linear(512, 10))


def small_cnn(T):
    return T.nn.Sequential(T.nn.Conv2d(3, 32, 3, padding=1), T.nn.ReLU(), T.nn.Conv2d(32, 64, 3, stride=2, padding=1),
                           T.nn.ReLU(), T.nn.AdaptiveAvgPool2d(1), T.nn.Flatten(), T.nn.Linear(64, 10))


def mnist(T):
    """pytorch/examples mnist/main.py's Net."""
    F = T.nn.functional

    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = T.nn.Conv2d(1, 32, 3, 1)
            self.conv2 = T.nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = T.nn.Dropout(0.25)
            self.dropout2 = T.nn.Dropout(0.5)
            self.fc1 = T.nn.Linear(9216, 128)
            self.fc2 = T.nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.relu(self.conv2(x))
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = T.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = self.dropout2(x)
            return F.log_softmax(self.fc2(x), dim=1)
    return Net()


def vae(T):
    """pytorch/examples vae/main.py's VAE (its forward samples: the columns time it all the same)."""
    F = T.nn.functional

    class VAE(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = T.nn.Linear(784, 400)
            self.fc21 = T.nn.Linear(400, 20)
            self.fc22 = T.nn.Linear(400, 20)
            self.fc3 = T.nn.Linear(20, 400)
            self.fc4 = T.nn.Linear(400, 784)

        def forward(self, x):
            h1 = F.relu(self.fc1(x.view(-1, 784)))
            mu, logvar = self.fc21(h1), self.fc22(h1)
            z = mu + T.randn_like(mu) * T.exp(0.5 * logvar)
            return T.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar
    return VAE()


def time_sequence(T):
    """pytorch/examples time_sequence_prediction/train.py's Sequence (float64)."""

    class Sequence(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = T.nn.LSTMCell(1, 51)
            self.lstm2 = T.nn.LSTMCell(51, 51)
            self.linear = T.nn.Linear(51, 1)

        def forward(self, input):
            outputs = []
            h_t = T.zeros(input.size(0), 51, dtype=T.double)
            c_t = T.zeros(input.size(0), 51, dtype=T.double)
            h_t2 = T.zeros(input.size(0), 51, dtype=T.double)
            c_t2 = T.zeros(input.size(0), 51, dtype=T.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                outputs += [self.linear(h_t2)]
            return T.cat(outputs, dim=1)
    return Sequence().double()


def word_lm(T):
    """pytorch/examples word_language_model/model.py's RNNModel, LSTM: 2 layers of 200, 1000 tokens."""

    class RNNModel(T.nn.Module):
        def __init__(self, ntoken=1000, ninp=200, nhid=200, nlayers=2):
            super().__init__()
            self.ntoken = ntoken
            self.drop = T.nn.Dropout(0.2)
            self.encoder = T.nn.Embedding(ntoken, ninp)
            self.rnn = T.nn.LSTM(ninp, nhid, nlayers, dropout=0.2)
            self.decoder = T.nn.Linear(nhid, ntoken)

        def forward(self, input, h0, c0):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, (h0, c0))
            decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
            return T.nn.functional.log_softmax(decoded, dim=1), hidden[0], hidden[1]
    return RNNModel()


def dcgan_generator(T, nz=100, ngf=64, nc=3):
    """pytorch/examples dcgan/main.py's Generator (its main Sequential)."""
    nn = T.nn
    return nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
        nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
        nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())


def dcgan_discriminator(T, nc=3, ndf=64):
    """pytorch/examples dcgan/main.py's Discriminator (its main Sequential, then view(-1, 1).squeeze(1))."""
    nn = T.nn

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, input):
            return self.main(input).view(-1, 1).squeeze(1)
    return Discriminator()


def super_resolution(T, upscale_factor=3):
    """pytorch/examples super_resolution/model.py's Net."""

    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = T.nn.ReLU()
            self.conv1 = T.nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
            self.conv2 = T.nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
            self.conv3 = T.nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
            self.conv4 = T.nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = T.nn.PixelShuffle(upscale_factor)

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            return self.pixel_shuffle(self.conv4(x))
    return Net()


def resnet18(T, num_classes=1000):
    """ResNet-18 as torchvision defines it (BasicBlock, [2, 2, 2, 2])."""
    nn = T.nn

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = downsample

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inplanes = 64
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            self.layer1 = self._layer(64, 1)
            self.layer2 = self._layer(128, 2)
            self.layer3 = self._layer(256, 2)
            self.layer4 = self._layer(512, 2)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def _layer(self, planes, stride):
            downsample = None
            if stride != 1 or self.inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                           nn.BatchNorm2d(planes))
            layers = [BasicBlock(self.inplanes, planes, stride, downsample), BasicBlock(planes, planes)]
            self.inplanes = planes
            return nn.Sequential(*layers)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(T.flatten(self.avgpool(x), 1))
    return ResNet()


def mobilenet_v2(T, num_classes=1000):
    """MobileNetV2 as torchvision defines it (width 1.0, ReLU6, inverted residuals)."""
    nn = T.nn

    def conv_bn(inp, oup, kernel, stride, groups=1, act=True):
        layers = [nn.Conv2d(inp, oup, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(oup)]
        return nn.Sequential(*layers, nn.ReLU6(inplace=True)) if act else nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, inp, oup, stride, expand):
            super().__init__()
            hidden = inp * expand
            self.use_res = stride == 1 and inp == oup
            layers = [conv_bn(inp, hidden, 1, 1)] if expand != 1 else []
            layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, oup, 1, 1, act=False)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            settings = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
                        [6, 320, 1, 1]]
            features = [conv_bn(3, 32, 3, 2)]
            inp = 32
            for t, c, n, s in settings:
                for i in range(n):
                    features.append(InvertedResidual(inp, c, s if i == 0 else 1, t))
                    inp = c
            features.append(conv_bn(inp, 1280, 1, 1))
            self.features = nn.Sequential(*features)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

        def forward(self, x):
            x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
            return self.classifier(T.flatten(x, 1))
    return MobileNetV2()


def squeezenet(T, num_classes=1000):
    """SqueezeNet 1.1 as torchvision defines it."""
    nn = T.nn

    class Fire(nn.Module):
        def __init__(self, inplanes, squeeze, expand1x1, expand3x3):
            super().__init__()
            self.squeeze = nn.Conv2d(inplanes, squeeze, 1)
            self.squeeze_activation = nn.ReLU(inplace=True)
            self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
            self.expand1x1_activation = nn.ReLU(inplace=True)
            self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)
            self.expand3x3_activation = nn.ReLU(inplace=True)

        def forward(self, x):
            x = self.squeeze_activation(self.squeeze(x))
            return T.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)

    class SqueezeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, ceil_mode=True),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), nn.MaxPool2d(3, 2, ceil_mode=True),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), nn.MaxPool2d(3, 2, ceil_mode=True),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256))
            self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, num_classes, 1), nn.ReLU(inplace=True),
                                            nn.AdaptiveAvgPool2d((1, 1)))

        def forward(self, x):
            return T.flatten(self.classifier(self.features(x)), 1)
    return SqueezeNet()


def _floats(*shape, dtype=np.float32):
    return lambda rng: [rng.standard_normal(shape).astype(dtype)]


def _word_lm_inputs(rng):
    return [rng.integers(0, 1000, (35, 20)).astype(np.int64), np.zeros((2, 20, 200), np.float32),
            np.zeros((2, 20, 200), np.float32)]


MODELS = [
    Model("MLP b1", mlp, _floats(1, 784)),
    Model("MLP b64", mlp, _floats(64, 784)),
    Model("small CNN 16x3x64x64", small_cnn, _floats(16, 3, 64, 64)),
    Model("mnist CNN 16x1x28x28", mnist, _floats(16, 1, 28, 28)),
    Model("VAE b64", vae, _floats(64, 784)),
    Model("time-sequence 8x100 f64", time_sequence, _floats(8, 100, dtype=np.float64), dtype="float64"),
    Model("word-LM LSTM 35x20", word_lm, _word_lm_inputs, needs=("nn.LSTM",), batch_dim=1),
    Model("DCGAN G 16x100", dcgan_generator, _floats(16, 100, 1, 1), needs=("nn.ConvTranspose2d",)),
    Model("DCGAN D 16x3x64x64", dcgan_discriminator, _floats(16, 3, 64, 64)),
    Model("super-res 4x1x64x64", super_resolution, _floats(4, 1, 64, 64), needs=("nn.PixelShuffle",)),
    Model("ResNet-18 2x3x64x64", resnet18, _floats(2, 3, 64, 64)),
    Model("MobileNetV2 2x3x64x64", mobilenet_v2, _floats(2, 3, 64, 64)),
    Model("SqueezeNet 2x3x64x64", squeezenet, _floats(2, 3, 64, 64)),
]
