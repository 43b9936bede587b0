"""PyTorch's dynamic quantization tutorial (word-language-model LSTM), on scriptc.

The tutorial's LSTMModel, its quantize_dynamic call, its print_size_of_model and evaluate, run with
`import scriptc as torch` on a synthetic corpus (no download). With torch installed, the same weights
are quantized by torch too and the two quantized models' outputs compared.

    python examples/dynamic_quantization.py [--ntokens 33278] [--batches 4]
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time

import numpy as np

import scriptc as torch
import scriptc.nn as nn
from scriptc import runtime


class LSTMModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder (the tutorial's model)."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        self.encoder.weight.data.uniform_(-initrange, initrange)
        self.decoder.bias.data.zero_()
        self.decoder.weight.data.uniform_(-initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        return decoded, hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def size_of_state_dict(lib, model) -> int:
    """The tutorial's print_size_of_model: the bytes of the saved state_dict."""
    buffer = io.BytesIO()
    lib.save(model.state_dict(), buffer)
    return buffer.getbuffer().nbytes


def evaluate(lib, model, data, targets, ntokens, bptt=25, batch=10):
    """The tutorial's evaluate: mean cross-entropy over the corpus, and the logits of every batch."""
    model.eval()
    total_loss, logits = 0.0, []
    hidden = model.init_hidden(batch)
    with lib.no_grad():
        for i in range(0, data.size(0), bptt):
            output, hidden = model(data[i:i + bptt], hidden)
            hidden = tuple(h.detach() for h in hidden)
            output_flat = output.view(-1, ntokens)
            total_loss += len(output) * lib.nn.functional.cross_entropy(output_flat,
                                                                       targets[i:i + bptt].reshape(-1)).item()
            logits.append(output.numpy())
    return total_loss / data.size(0), np.concatenate(logits)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ntokens", type=int, default=33278)
    parser.add_argument("--batches", type=int, default=4, help="bptt windows of the synthetic corpus")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = LSTMModel(ntoken=args.ntokens, ninp=512, nhid=256, nlayers=5).eval()
    corpus = np.random.default_rng(0).integers(0, args.ntokens, (25 * args.batches + 1, 10))
    data, targets = torch.tensor(corpus[:-1]), torch.tensor(corpus[1:])

    quantized_model = torch.quantization.quantize_dynamic(model, {nn.LSTM, nn.Linear}, dtype=torch.qint8)
    print(quantized_model)
    float_size, quantized_size = size_of_state_dict(torch, model), size_of_state_dict(torch, quantized_model)
    print(f"state_dict size (MB): float {float_size / 1e6:.2f}, quantized {quantized_size / 1e6:.2f} "
          f"({float_size / quantized_size:.2f}x smaller; the float embedding is {model.encoder.weight.numel() * 4 / 1e6:.2f})")

    results = {}
    for name, m in (("float", model), ("quantized", quantized_model)):
        start = time.perf_counter()
        results[name] = evaluate(torch, m, data, targets, args.ntokens)
        print(f"scriptc {name:9s} loss: {results[name][0]:.4f}  elapsed time (seconds): "
              f"{time.perf_counter() - start:.2f}")
    logits = results["quantized"][1]
    quantization_error = np.abs(logits - results["float"][1]).max()
    print(f"quantized vs float logits: max |diff| {quantization_error:.2e}")

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "word_lm_quantized.sc")
        hidden = quantized_model.init_hidden(10)
        torch.jit.trace(quantized_model, (data[:25], hidden)).save(path)
        loaded = runtime.load(path)
        outputs = loaded(corpus[:25], tuple(h.numpy() for h in hidden))
        print(f"traced, saved ({os.path.getsize(path) / 1e6:.2f} MB) and runtime.load'ed: max |diff| "
              f"{np.abs(np.asarray(outputs[0]) - logits[:25]).max():.2e}")

    try:
        import torch as real_torch
    except ImportError:
        return
    real_torch.set_num_threads(1)
    reference = _torch_model(real_torch, model)
    reference_quantized = real_torch.ao.quantization.quantize_dynamic(
        reference, {real_torch.nn.LSTM, real_torch.nn.Linear}, dtype=real_torch.qint8)
    for name, m in (("float", reference), ("quantized", reference_quantized)):
        start = time.perf_counter()
        loss, torch_logits = evaluate(real_torch, m, real_torch.tensor(corpus[:-1]), real_torch.tensor(corpus[1:]),
                                      args.ntokens)
        print(f"torch   {name:9s} loss: {loss:.4f}  elapsed time (seconds): {time.perf_counter() - start:.2f}")
    print(f"scriptc vs torch quantized logits: max |diff| "
          f"{np.abs(logits - torch_logits).max():.2e} (quantization itself moved them {quantization_error:.2e}); "
          f"torch's quantized state_dict {size_of_state_dict(real_torch, reference_quantized) / 1e6:.2f} MB")


def _torch_model(real_torch, model):
    """The same model built with torch, holding the scriptc model's weights."""
    torch_nn = real_torch.nn

    class TorchLSTMModel(torch_nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch_nn.Dropout(0.5)
            self.encoder = torch_nn.Embedding(model.encoder.num_embeddings, model.encoder.embedding_dim)
            self.rnn = torch_nn.LSTM(model.rnn.input_size, model.nhid, model.nlayers, dropout=0.5)
            self.decoder = torch_nn.Linear(model.nhid, model.decoder.out_features)
            self.nhid, self.nlayers = model.nhid, model.nlayers

        forward = LSTMModel.forward
        init_hidden = LSTMModel.init_hidden

    reference = TorchLSTMModel()
    reference.load_state_dict({k: real_torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    return reference.eval()


if __name__ == "__main__":
    main()
