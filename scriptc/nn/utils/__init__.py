"""scriptc.nn.utils: gradient clipping, parameters as one vector, weight and spectral norm, parametrizations,
packed sequences for the recurrent layers (rnn), BatchNorm folding (fusion),
pruning masks (prune) and functional_call (stateless)."""

from . import parametrizations  # noqa: F401
from . import parametrize  # noqa: F401
from . import rnn  # noqa: F401
from . import fusion  # noqa: F401
from . import prune  # noqa: F401
from . import stateless  # noqa: F401
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .init import skip_init  # noqa: F401
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
from scriptc.torch_names import missing_attribute as _missing_attribute


__getattr__ = _missing_attribute("torch.nn.utils", __name__)
