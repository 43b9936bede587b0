"""torch.stft and torch.istft: the short-time Fourier transform and its inverse, composed from ops
(pad, unfold, multiply, the torch.fft transforms, fold) so autograd, tracing and the compiled path see
through them. Checks, defaults and error wording follow PyTorch 2.13's SpectralOps."""

from __future__ import annotations

import warnings

from scriptc.ops.rules import scalar_type_name
from scriptc.tensors import Tensor
from scriptc.types import complex128, complex64, float32, float64

_FLOATING = (float32, float64)
_COMPLEX = (complex64, complex128)


def _describe(x: Tensor) -> str:
    return f"torch.{scalar_type_name(x.dtype)}Tensor"


def _window_arg(window) -> str:
    return "None" if window is None else f"{_describe(window)}{{{list(window.shape)}}}"


def _padded_window(window: Tensor | None, win_length: int, n_fft: int, dtype) -> Tensor:
    """The window centred in n_fft points (ones when none is given)."""
    import scriptc as torch
    from scriptc.nn import functional as F

    if window is None:
        window = torch.ones(win_length, dtype=dtype)
    left = (n_fft - win_length) // 2
    return F.pad(window, [left, n_fft - win_length - left]) if win_length != n_fft else window


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None) -> Tensor:
    """Short-time Fourier transform of a 1-D signal or a batch of them (B, L): frames of n_fft samples every
    hop_length, each multiplied by `window` (centred, win_length long) and Fourier transformed. Returns
    (B?, n_fft // 2 + 1 or n_fft, n_frames), complex, or real with a trailing (re, im) dim when
    return_complex=False."""
    import scriptc as torch
    from scriptc.nn import functional as F

    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        signal_dim = input.dim()
        extended_shape = [1] * (3 - signal_dim) + list(input.shape)
        pad = int(n_fft // 2)
        input = F.pad(input.view(extended_shape), [pad, pad], pad_mode)
        input = input.view(input.shape[-signal_dim:])
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    is_complex = input.dtype in _COMPLEX or (window is not None and window.dtype in _COMPLEX)
    if return_complex is None:
        if not is_complex:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you "
                      "can still call torch.view_as_real on the complex output to recover the old return format.",
                      UserWarning, stacklevel=2)
    call = (f"stft({_describe(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_arg(window)}, normalized={int(normalized)}, onesided="
            f"{'None' if onesided is None else int(onesided)}, return_complex={int(return_complex)}, "
            f"align_to_window={'None' if align_to_window is None else int(align_to_window)}) : ")
    if input.dtype not in _FLOATING + _COMPLEX:
        raise RuntimeError(call + "expected a tensor of floating point or complex values")
    if input.dim() not in (1, 2):
        raise RuntimeError(call + "expected a 1D or 2D tensor")
    length = input.shape[-1]
    if align_to_window:
        left = (n_fft - win) // 2
        input = F.pad(input, [left, n_fft - win - left])
    if n_fft <= 0 or n_fft > input.shape[-1]:
        raise RuntimeError(call + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(call + f"expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(call + f"expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(call + f"expected a 1D window tensor of size equal to win_length={win}, but got window "
                                  f"with size {list(window.shape)}")
    if onesided is None:
        onesided = not is_complex
    elif onesided and is_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    real_dtype = float64 if float64 in (input.dtype, getattr(window, "dtype", None)) or \
        complex128 in (input.dtype, getattr(window, "dtype", None)) else float32
    frames = input.unfold(-1, n_fft, hop) * _padded_window(window, win, n_fft, real_dtype)
    norm = "ortho" if normalized else "backward"
    spectrum = torch.fft.rfft(frames, dim=-1, norm=norm) if onesided else torch.fft.fft(frames, dim=-1, norm=norm)
    spectrum = spectrum.transpose(-1, -2)
    return spectrum if return_complex else torch.view_as_real(spectrum)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: int | None = None, return_complex: bool = False) -> Tensor:
    """Inverse short-time Fourier transform: inverse-transforms each frame of a complex (B?, freq, n_frames)
    spectrum, overlap-adds the windowed frames and divides by the summed squared window (which must not
    vanish anywhere: the NOLA condition). `length` trims or zero-pads the result."""
    import scriptc as torch
    from scriptc.nn import functional as F

    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if input.dtype not in _COMPLEX:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    shape = list(input.shape)
    call = (f"istft(CPU{_describe(input)[6:-6]}Type{shape}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={_window_arg(window)}, center={int(center)}, normalized={int(normalized)}, onesided="
            f"{'None' if onesided is None else int(onesided)}, length={length}, "
            f"return_complex={int(return_complex)}) ")
    if input.numel() == 0:
        raise RuntimeError(call + ": istft input tensor cannot be empty")
    if input.dim() not in (2, 3):
        raise RuntimeError(call + f": expected a tensor with 3 or 4 dimensions, but got {input.dim() + 1}")
    fft_size, n_frames = shape[-2], shape[-1]
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(call + ": expected the frequency dimension (3rd to the last) of the input tensor to match "
                                  f"n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(call + ": expected the frequency dimension (3rd to the last) of the input tensor to match "
                                  f"n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise RuntimeError(call + ": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(call + ": expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(call + ": Invalid window shape. window has to be 1D and length of `win_length`")
    real_dtype = float64 if input.dtype == complex128 else float32
    padded_window = _padded_window(window, win, n_fft, real_dtype)
    frames = input.unsqueeze(0) if input.dim() == 2 else input
    frames = frames.transpose(1, 2)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = torch.fft.ifft(frames, dim=-1, norm=norm)
    else:
        if window is not None and window.dtype in _COMPLEX:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            frames = frames[..., :n_fft // 2 + 1]
        frames = torch.fft.irfft(frames, n=n_fft, dim=-1, norm=norm)
    expected_length = n_fft + hop * (n_frames - 1)
    fold = {"output_size": (1, expected_length), "kernel_size": (1, n_fft), "stride": (1, hop)}
    signal = _overlap_add(frames * padded_window, fold)
    envelope = _overlap_add((padded_window * padded_window).expand(1, n_frames, n_fft), fold)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = expected_length - n_fft // 2 if center else expected_length
    signal, envelope = signal[:, start:end], envelope[:, start:end]
    if bool((envelope.abs().min() < 1e-11).item()):
        raise RuntimeError(call + "window overlap add min: 1\n[ CPUBoolType{} ]")
    signal = signal / envelope
    if input.dim() == 2:
        signal = signal.squeeze(0)
    if end > expected_length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                      "in the tail. Please check your center and hop_length settings.", UserWarning, stacklevel=2)
        signal = F.pad(signal, [0, end - expected_length])
    return signal


def _overlap_add(frames: Tensor, fold: dict) -> Tensor:
    """(C, n_frames, n_fft) frames summed into (C, length) at their hop offsets (F.fold over one row)."""
    from scriptc.nn import functional as F

    if frames.dtype in _COMPLEX:
        parts = [_overlap_add(part, fold) for part in (frames.real, frames.imag)]
        import scriptc as torch
        return torch.complex(*parts)
    return F.fold(frames.transpose(1, 2), **fold).reshape(frames.shape[0], fold["output_size"][1])
