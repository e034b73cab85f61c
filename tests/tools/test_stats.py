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
    assert stats == {"calling": 0.5, "calls": 0.5, "unparsed": 0.25, "tool_errors": 0.5, "turns": 1.5}


def test_no_transcripts_no_numbers():
    assert tool_stats([]) == {}


def test_a_transcript_reads_as_one_line():
    assert transcript_text(CALLED) == "[call python({'code': 'print(2 * 3)'})] [python -> 6] <answer>6</answer>"
