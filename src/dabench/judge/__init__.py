"""The LLM judge: claim decomposition, versioned prompt and rubric, cache, calibration.

Public API::

    Judge(provider, *, rubric=None, prompt=None, cache=None, tool_output_chars=6000)
    make_judge("openai:gpt-4.1", base_url=..., cache_dir=...) -> Judge
    load_rubric("v1"), load_prompt("claims_v1")
    cohen_kappa(a, b), run_calibration(...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.judge.cache import JudgeCache
    from dabench.judge.judge import Judge, JudgeError, JudgeResult
    from dabench.judge.model import Claim, JudgeVerdict, RubricVerdict
    from dabench.judge.prompt import JudgeInput, load_prompt
    from dabench.judge.rubric import Rubric, RubricItem, load_rubric

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.judge.cache": [
            "JudgeCache",
        ],
        "dabench.judge.judge": [
            "Judge",
            "JudgeError",
            "JudgeResult",
        ],
        "dabench.judge.model": [
            "Claim",
            "JudgeVerdict",
            "RubricVerdict",
        ],
        "dabench.judge.prompt": [
            "JudgeInput",
            "load_prompt",
        ],
        "dabench.judge.rubric": [
            "Rubric",
            "RubricItem",
            "load_rubric",
        ],
    },
)

__all__ = [
    "Claim",
    "Judge",
    "JudgeCache",
    "JudgeError",
    "JudgeInput",
    "JudgeResult",
    "JudgeVerdict",
    "Rubric",
    "RubricItem",
    "RubricVerdict",
    "load_prompt",
    "load_rubric",
]
