"""`make judge-server`'s command line: the kit's defaults where the user set nothing, theirs where they did."""

from kit.cli.judge_server import server_arguments
from kit.config.judging import JUDGE_PORT
from kit.models.smollm2 import packaged_gguf


def test_defaults_fill_what_is_not_given():
    argv = server_arguments([])
    options = dict(zip(argv[::2], argv[1::2]))
    assert options == {"--host": "127.0.0.1", "--port": str(JUDGE_PORT), "--model_alias": "judge",
                       "--n_ctx": "2048", "--model": str(packaged_gguf())}


def test_what_the_user_sets_wins():
    argv = server_arguments(["--model", "my.gguf", "--port=9000", "--verbose", "False"])
    assert argv.count("--model") == 1 and "my.gguf" in argv
    assert "--port=9000" in argv and "--port" not in argv
    assert argv[-2:] == ["--n_ctx", "2048"]
