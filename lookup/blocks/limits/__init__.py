"""Rate limiters as a subject of their own (seed 004, "Design a Rate Limiter").

The limiters themselves live in :mod:`lookup.kit.ratelimit` (the shortener uses them);
this block holds what studies them: :mod:`.traffic` (request streams — steady, burst,
boundary attack, many identities — and replaying one at a real limiter) and
:mod:`.experiments` (the seed's claims measured: boundary burst, error bounds, memory per
identity, limit/N against a shared limit, the hybrid's bounds).
"""
