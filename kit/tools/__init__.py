"""Tools and environments: GRPO for a model that calls tools over several turns (recipes' TOOLS / ENVIRONMENT).

toolbox.py checks a recipe's tools and hands them to TRL's trainer or to a rollout; template.py gives a
tokenizer a chat template and parser that can show tool calls; python.py is a Python interpreter tool that
runs the model's code in kit/sandbox; stats.py says what a batch of transcripts did with their tools;
reply_guard.py makes a reply's tool calls safe to run, render and tokenize, whatever the model wrote.
Multi-turn rollouts outside training (evaluation, chat) are kit/eval/rollout.py's.
"""

from kit.tools.python import python_tool
from kit.tools.stats import tool_stats, transcript_text
from kit.tools.toolbox import Toolbox

__all__ = ["Toolbox", "python_tool", "tool_stats", "transcript_text"]
