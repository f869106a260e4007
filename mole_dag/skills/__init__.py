"""What the stages ask of a mind (plan, mine, judge, write, ground, hypothesize): the protocol and
the request/answer types every stage shares, and the local-data view the hypothesis skill sees.
The lowest stage level: the stages and `context.Run` import it; the implementations that wire the
stages' own prompts and extractive rules together live in `mole_dag.skillsets`, above them."""
