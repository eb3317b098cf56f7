"""The scripted runtime's compaction summary (WIRE.md §16): deterministic, from roles and first words."""

from __future__ import annotations

from hermes_api_plugin.core.content import Message, ToolCall, text_message
from hermes_api_plugin.runtimes.base import CompactionRequest
from hermes_api_plugin.runtimes.scripted import ScriptedRuntime, default_script_path, load_script
from hermes_api_plugin.runtimes.scripted_summary import scripted_summary

CONVERSATION = (
    text_message("user", "Please list the files in my project and tell me what you see there"),
    Message("assistant", (), tool_calls=(ToolCall("call_1", "terminal", '{"command":"ls"}'),)),
    text_message("tool", "README.md src/", tool_call_id="call_1"),
    text_message("assistant", "Your project has README.md and src/."),
)


def test_the_summary_names_each_message_by_role_and_first_words() -> None:
    compaction = scripted_summary(CONVERSATION, "Answer tersely.")
    assert compaction.summary.splitlines() == [
        "Scripted summary of 4 message(s):",
        "- instructions: Answer tersely.",
        "- user: Please list the files in my project and …",
        "- assistant called terminal",
        "- tool: README.md src/",
        "- assistant: Your project has README.md and src/.",
    ]


def test_the_summary_is_stable_and_counts_words() -> None:
    first, second = scripted_summary(CONVERSATION), scripted_summary(CONVERSATION)
    assert first == second
    assert first.usage.prompt_tokens == 14 + 2 + 6
    assert first.usage.completion_tokens == len(first.summary.split())


async def test_the_scripted_runtime_compacts_with_it() -> None:
    runtime = ScriptedRuntime(load_script(default_script_path()))
    compaction = await runtime.compact(CompactionRequest(CONVERSATION))
    assert compaction == scripted_summary(CONVERSATION)
