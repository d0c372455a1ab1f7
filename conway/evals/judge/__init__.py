"""Best of N with a judge: Agent S3's narratives and comparative judge over a rollout set (`conway judge`).

`agent_s3.py`: the narrator's and the judge's requests as Agent S3's code builds them (its prompts: `prompts/`);
`trajectory.py`: a rollout's screenshots and actions from its home; `run.py`: the suite, its command and its
report (`best-of-n`). The figures themselves (pass@1, pass@k, best-of-N, cost): `conway.evals.best_of_n`.
"""
