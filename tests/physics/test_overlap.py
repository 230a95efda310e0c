"""The closed form of exposed communication against a direct simulation of DDP's bucket schedule."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlsysim.physics.collectives import bucket_layout
from mlsysim.physics.overlap import exposed_communication


def simulate(gradient, bucket, backward, startup, per_byte):
    """Buckets become ready as the backward pass produces gradients; the network reduces them in order."""
    count, size, last = bucket_layout(gradient, bucket)
    count = int(count)
    finish = 0.0
    for j in range(1, count + 1):
        ready = backward * min(j * size, gradient) / gradient
        message = size if j < count else last
        finish = max(finish, ready) + startup + message * per_byte
    return max(finish - backward, 0.0) if finish > backward else 0.0


def closed_form(gradient, bucket, backward, startup, per_byte):
    count, size, last = bucket_layout(gradient, bucket)
    total = count * startup + gradient * per_byte
    return exposed_communication(
        total,
        startup + size * per_byte,
        startup + last * per_byte,
        backward,
        count,
        size / gradient,
        last / gradient,
    )


@settings(max_examples=300, deadline=None)
@given(
    st.floats(1e3, 1e10),
    st.floats(1e-3, 1.0),
    st.floats(1e-4, 10.0),
    st.floats(0.0, 1e-3),
    st.floats(1e-13, 1e-8),
)
def test_closed_form_equals_the_schedule(gradient, bucket_share, backward, startup, per_byte):
    bucket = max(
        gradient * bucket_share, 1.0
    )  # at most 1000 buckets, so the simulation stays quick
    expected = simulate(gradient, bucket, backward, startup, per_byte)
    got = closed_form(gradient, bucket, backward, startup, per_byte)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_a_tiny_last_bucket_exposes_the_one_before_it_too():
    # 3 buckets: 1000, 1000, 1 bytes; the second is ready just before the backward pass ends
    got = closed_form(2001.0, 1000.0, 1.0, 0.0, 1e-4)
    assert got == pytest.approx(0.1 + 1e-4 - 1.0 / 2001.0)
    assert got == pytest.approx(simulate(2001.0, 1000.0, 1.0, 0.0, 1e-4))


def test_no_backward_time_hides_nothing():
    assert closed_form(1e9, 25e6, 0.0, 1e-5, 1e-9) == pytest.approx(40 * 1e-5 + 1.0)


def test_a_long_backward_pass_leaves_only_the_last_bucket():
    assert closed_form(1e9, 3e8, 100.0, 0.0, 1e-9) == pytest.approx(1e8 * 1e-9)
