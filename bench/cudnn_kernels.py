#!/usr/bin/env python3
# Which cuDNN kernels run the layers we trail on (names and times), for the next step's design.
import torch
from torch.profiler import profile, ProfilerActivity
torch.backends.cudnn.benchmark = True
def layer(name, n, h, w, c, k, r, s, stride, pad, dtype):
    x = torch.randn(n, c, h, w, device='cuda', dtype=dtype).to(memory_format=torch.channels_last).requires_grad_(True)
    wt = torch.randn(k, c, r, s, device='cuda', dtype=dtype).to(memory_format=torch.channels_last).requires_grad_(True)
    y = torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad)
    gy = torch.randn_like(y)
    for _ in range(3):
        torch.ops.aten.convolution_backward(gy, x, wt, None, [stride]*2, [pad]*2, [1,1], False, [0,0], 1, [True, True, False])
        torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad)
        torch.cuda.synchronize()
        torch.ops.aten.convolution_backward(gy, x, wt, None, [stride]*2, [pad]*2, [1,1], False, [0,0], 1, [True, False, False])
        torch.cuda.synchronize()
    print('==', name)
    for e in prof.key_averages():
        if e.device_type.name == 'CUDA' or getattr(e, 'self_device_time_total', 0) > 0:
            print('   %8.1f us  %s' % (e.self_device_time_total, e.key[:150]))
layer('stem f16 fprop+dgrad', 128, 224, 224, 3, 64, 7, 7, 2, 3, torch.float16)
layer('28x28 256->256 3x3 s2', 128, 28, 28, 256, 256, 3, 3, 2, 1, torch.float16)
layer('14x14 1024->2048 1x1 s2', 128, 14, 14, 1024, 2048, 1, 1, 2, 0, torch.float16)
