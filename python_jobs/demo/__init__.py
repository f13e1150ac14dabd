"""make demo and the seeded generator of demo CDC events (also the oracle the tests check mirrors against)."""
