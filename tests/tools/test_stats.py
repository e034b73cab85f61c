"""What a batch of transcripts did with its tools, counted."""

from kit.tools.stats import tool_stats, transcript_text

CALL = {"type": "function", "function": {"name": "python", "arguments": {"code": "print(2 * 3)"}}}
CALLED = [{"role": "assistant", "content": "", "tool_calls": [CALL]},
          {"role": "tool", "name": "python", "content": "6"}, {"role": "assistant", "content": "<answer>6</answer>"}]
FAILED = [{"role": "assistant", "content": "", "tool_calls": [CALL]},
          {"role": "tool", "name": "python", "content": "{'error': 'boom'}"}, {"role": "assistant", "content": "?"}]
UNPARSED = [{"role": "assistant", "content": '<tool_call>{"name": "python", "argu'}]
PLAIN = [{"role": "assistant", "content": "<answer>6</answer>"}]


def test_calls_failures_unparsed_and_turns_are_counted():
    stats = tool_stats([CALLED, FAILED, UNPARSED, PLAIN])
    assert stats == {"calling": 0.5, "calls": 0.5, "unparsed": 0.25, "over_budget": 0.0, "tool_errors": 0.5,
                     "turns": 1.5}


def malformed_call(name, arguments) -> list[dict]:
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return [{"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": str(name), "content": "{'error': 'Tool 5 not found.'}"}]


def test_a_call_that_parsed_but_cannot_run_as_written_counts_as_unparsed():
    # kit.tools.reply_guard says a name that is not a string is not one, and keeps arguments as written
    for transcript in (malformed_call("(not a name: 5)", {}), malformed_call("(not a name: null)", {}),
                       malformed_call("\\ud800", {}),
                       malformed_call("python", "print(1)"), malformed_call("python", ["x"])):
        assert tool_stats([transcript])["unparsed"] == 1.0, transcript
    assert tool_stats([CALLED])["unparsed"] == 0.0


def test_a_rollout_that_met_its_tool_budget_is_counted():
    spent = [*CALLED[:2], {"role": "assistant", "content": "", "tool_calls": [CALL]},
             {"role": "tool", "name": "python", "content": "{'error': 'tool budget spent: more than 8 tool calls'}"}]
    assert tool_stats([spent, CALLED])["over_budget"] == 0.5


def test_no_transcripts_no_numbers():
    assert tool_stats([]) == {}


def test_a_transcript_reads_as_one_line():
    assert transcript_text(CALLED) == "[call python({'code': 'print(2 * 3)'})] [python -> 6] <answer>6</answer>"
