"""Placeholder: the non-claim filter arrives with the furniture branch."""


def non_claim_reason(sentence: str) -> str | None:
    return None
