"""Fixtures of the tiny-GPT tests: the small models of tests/gpt/support.py, by name."""

import pytest

from tests.gpt.support import small_model


@pytest.fixture
def masked_model():
    return small_model(causal=True)


@pytest.fixture
def unmasked_model():
    return small_model(causal=False)
