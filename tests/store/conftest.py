"""Fixtures of the results-store tests: the Elastic tests' fresh Elasticsearch stand-in."""

from tests.elastic.conftest import fake_es

__all__ = ["fake_es"]
