"""numba.cuda kernels (the cuda package); every CPU kernel is C++ (_ext/).

No kernel here uses Numba's on-disk cache (the CUDA kernels are made per specialisation by cached factories,
compiled on first use in each process), so nothing needs a writable cache directory.
"""
