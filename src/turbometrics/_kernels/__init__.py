"""numba.cuda kernels (cuda.py); every CPU kernel is C++ (_ext/).

No kernel here uses Numba's on-disk cache (the CUDA kernels are made per layout in closures, compiled
on first use in each process), so nothing needs a writable cache directory.
"""
