"""FTorch's layout rule and the no-copy wrapping of host memory."""

import numpy as np
import pytest
import torch

from couplescope.backends.host_memory import ftorch_strides, numpy_view, permutation, strides_for


def test_fortran_layout_gives_column_major_strides():
    # FTorch: a Fortran (n, m) array is an (n, m) tensor with strides (1, n)
    assert ftorch_strides((3, 4), permutation(2, "fortran")) == (1, 3)
    assert ftorch_strides((2, 3, 4), (1, 2, 3)) == (1, 2, 6)


def test_reversed_layout_gives_row_major_strides():
    assert ftorch_strides((3, 4), permutation(2, "c")) == (4, 1)
    assert ftorch_strides((2, 3, 4), (3, 2, 1)) == (12, 4, 1)


def test_arbitrary_permutation_follows_the_recurrence():
    # stride(layout(i)) = stride(layout(i-1)) * shape(layout(i-1))
    assert ftorch_strides((2, 3, 4), (2, 3, 1)) == (12, 1, 3)


def test_fortran_strides_match_numpy_for_a_fortran_array():
    a = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert tuple(s // a.itemsize for s in a.strides) == strides_for(a, "fortran")


def test_wrapping_is_no_copy_and_c_layout_transposes():
    from couplescope.backends.host_memory import flat_memory

    a = np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    good = torch.from_numpy(flat_memory(a)).as_strided(a.shape, strides_for(a, "fortran"))
    assert good.data_ptr() == a.ctypes.data
    assert torch.equal(good, torch.from_numpy(np.ascontiguousarray(a)))
    bad = torch.from_numpy(flat_memory(a)).as_strided(a.shape, strides_for(a, "c"))
    assert bad.data_ptr() == a.ctypes.data
    assert not torch.equal(bad, good)
    # writing through the wrapped tensor reaches host memory
    good[0, 1] = -1.0
    assert a[0, 1] == -1.0


def test_numpy_view_is_no_copy():
    a = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    v = numpy_view(a, "fortran")
    assert np.shares_memory(v, a) and np.array_equal(v, a)
    v[1, 2] = 99
    assert a[1, 2] == 99
    w = numpy_view(a, "c")
    assert np.shares_memory(w, a) and not np.array_equal(w, a)


def test_unknown_layout_rejected():
    with pytest.raises(ValueError):
        permutation(2, "zigzag")
