"""What detection without a provider name shares: the keys by which a format asked earlier
claims a body, and a Struct of every key that sends a body to another format.

Cohere and Ollama bodies carry no key that names their format, and are asked last; a body
holding any key of `CLAIMED_EARLIER` may belong to an earlier format, so detection asks
those first (`providers/__init__.py`). Their strict readers decline such a body for the
same reason, through `ElsewhereKeys`, which their body Structs extend.
"""

from __future__ import annotations

import msgspec

from refusals.providers._common import NO_RAW, Raw

CLAIMED_EARLIER = frozenset(
    {
        "type",  # Anthropic
        "object",  # OpenAI Responses (and Chat's `chat.completion`)
        "output",  # Responses, Bedrock Converse
        "error",  # Gemini's google.rpc.Status
        "candidates",  # Gemini
        "promptFeedback",
        "prompt_feedback",
        "usageMetadata",
        "usage_metadata",
        "stopReason",  # Bedrock Converse
        "__type",  # Bedrock errors
        "Error",  # botocore's error dump
    }
)
"""Every key whose presence lets a format searched before Cohere and Ollama claim a body."""


class ElsewhereKeys(msgspec.Struct, gc=False):
    """The keys of `CLAIMED_EARLIER` but `error` (Cohere's and Ollama's own), OpenAI's
    `choices`, and the ones `bedrock.is_invoke_body` reads, as presence only."""

    type: Raw = NO_RAW
    object: Raw = NO_RAW
    output: Raw = NO_RAW
    candidates: Raw = NO_RAW
    promptFeedback: Raw = NO_RAW
    prompt_feedback: Raw = NO_RAW
    usageMetadata: Raw = NO_RAW
    usage_metadata: Raw = NO_RAW
    stopReason: Raw = NO_RAW
    aws_type: Raw = msgspec.field(default=NO_RAW, name="__type")
    aws_error: Raw = msgspec.field(default=NO_RAW, name="Error")
    choices: Raw = NO_RAW
    guardrail_action: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-guardrailAction")
    invocation_metrics: Raw = msgspec.field(default=NO_RAW, name="amazon-bedrock-invocationMetrics")
    results: Raw = NO_RAW
    generation: Raw = NO_RAW
    outputs: Raw = NO_RAW

    def claimed_elsewhere(self) -> bool:
        """Whether a key of another format is there (detection then looks elsewhere)."""
        return bool(
            self.type or self.object or self.output or self.candidates or self.promptFeedback
            or self.prompt_feedback or self.usageMetadata or self.usage_metadata
            or self.stopReason or self.aws_type or self.aws_error or self.choices
            or self.guardrail_action or self.invocation_metrics or self.results
            or self.generation or self.outputs
        )  # fmt: skip
