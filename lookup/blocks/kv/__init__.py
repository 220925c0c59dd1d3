"""A Dynamo-style key-value store as a subject of its own (seed 004, "Design a Key-Value Store").

Storage-node processes on loopback (:mod:`.node`), each with a SQLite engine
(:mod:`.store`), coordinate quorum reads and writes over a consistent hashing ring
(:mod:`lookup.kit.ring`), version values with vector clocks (:mod:`.vclock`), and repair
replicas by hinted handoff, read repair and Merkle-tree anti-entropy (:mod:`.merkle`).
The quorum is strict, unlike Dynamo's sloppy one: W counts only a key's home replicas, a
hint never counts, so R + W > N always overlaps (:mod:`.coordinator`).
:mod:`.cluster` starts and breaks a fleet of them (kill -9, SIGSTOP, partitions),
:mod:`.checker` judges a recorded history of operations, :mod:`.experiments` measures
the seed's claims.
"""
