"""Every flag checked once: each kind of value (counts, batch sizes, seeds, ports, paths to read, paths to
write, reports, `--set` keys and values) is checked by one validator (`zoo.settings.values`) that every
command uses. Every command is run here with every bad value of each kind it takes: one line on stderr
naming the flag, exit status 2, nothing written (the commands run in an empty working folder)."""

import os

import pytest

import evaluate
import export
import predict
import train
from zoo.commands import compare, demo, sweep

# Bad values of each kind: (value, what the line says). `{tmp}` is the test's empty working folder, `{file}`
# a file in another folder (a file where a folder is meant, and a folder's parent that is a file).
BAD = {
    "count": [("-1", "whole number from 1 to "), ("0", "whole number from 1 to "), ("1.5", "must be a whole number"),
              ("many", "must be a whole number"), ("99999999999", "whole number from 1 to "),
              ("nan", "must be a whole number")],
    "count_or_zero": [("-3", "whole number from 0 to "), ("x", "must be a whole number"),
                      ("99999999999", "whole number from 0 to ")],
    "batch_size": [("0", "from 1 to 65,536"), ("-1", "from 1 to 65,536"), ("100000000000", "from 1 to 65,536")],
    "seed": [("-1", "from 0 to 4,294,967,295"), ("4294967296", "from 0 to 4,294,967,295")],
    "seconds": [("-2", "number >= 0"), ("soon", "must be a number"), ("nan", "number >= 0"),
                ("99999999999", "at most 10,000,000 seconds")],
    "port": [("0", "from 1 to 65,535"), ("70000", "from 1 to 65,535")],
    "folder_to_read": [("{tmp}/nowhere", "no such folder"), ("{file}", "is a file; name a folder")],
    "file_to_read": [("{tmp}/nowhere.jsonl", "no such file"), ("{other}", "is a folder; name a file")],
    "path_to_read": [("{tmp}/nowhere", "no such file or folder")],
    "folder_to_write": [("/proc/nope", "cannot be created"), ("{file}", "is a file; name a folder"),
                        ("{file}/inside", "is a file, not a folder")],
    "file_to_write": [("/proc/nope.jsonl", "cannot be created"), ("{other}", "is a folder; name a file")],
    "report": [("/proc/nope.json", "cannot be created"), ("/proc/nope/", "cannot be created"),
               ("{file}/inside.json", "is a file, not a folder")],
}

# Each command: its main, arguments that make the rest of the line valid (`{tmp}`: an existing folder),
# and its flags by kind.
COMMANDS = {
    "train": (train.main, ["--model", "bowman_lstm", "--dataset", "snli_sample", "--embeddings", "none"], {
        "--epochs": "count", "--embedding-dim": "count", "--max-train-examples": "count",
        "--max-eval-examples": "count", "--batch-size": "batch_size", "--seed": "seed",
        "--log-every": "count_or_zero", "--attention-examples": "count_or_zero", "--images-every": "count_or_zero",
        "--cluster-timeout": "seconds",
        "--init-from": "folder_to_read", "--data-dir": "path_to_read", "--run-dir": "folder_to_write",
        "--logdir": "folder_to_write"}),
    "evaluate": (evaluate.main, ["--run-dir", "{tmp}", "--dataset", "snli_sample"], {
        "--max-examples": "count", "--batch-size": "batch_size", "--output": "report",
        "--saved-model": "folder_to_read", "--data-dir": "path_to_read", "--hans": "file_to_read"}),
    "predict": (predict.main, ["--run-dir", "{tmp}", "--premise", "A man.", "--hypothesis", "A person."], {
        "--batch-size": "batch_size", "--num-threads": "count", "--input": "file_to_read",
        "--output": "file_to_write", "--attention-png": "file_to_write", "--tflite": "path_to_read"}),
    "export": (export.main, ["--run-dir", "{tmp}"], {
        "--version": "count", "--stable-version": "count", "--tflite-batch-size": "batch_size",
        "--chunk-size": "count_or_zero", "--xla-max-batch": "count_or_zero", "--max-vocabulary": "count",
        "--out": "folder_to_write"}),
    "compare": (compare.main, ["{tmp}"], {"--resamples": "count", "--seed": "seed", "--out": "folder_to_write"}),
    "sweep": (sweep.main, ["--models", "bowman_lstm", "--dir", "{tmp}/sweep"], {
        "--max-trials": "count", "--epochs": "count", "--batch-size": "batch_size", "--embedding-dim": "count",
        "--max-train-examples": "count", "--data-dir": "path_to_read"}),
    "demo": (demo.main, ["{tmp}"], {"--port": "port"}),
}
# A `--run-dir` that is not a folder must be refused by every command that reads one.
COMMANDS_READING_A_RUN = ("evaluate", "predict", "export")

# `--set` keys and values: every command that takes them checks them as train does.
BAD_SETTINGS = [("hiden_size=8", "unknown setting 'hiden_size'"), ("oov=nosuch", "oov must be one of"),
                ("hidden_size=0", "hidden_size must be a whole number from 1 to "),
                ("dropout=1.5", "dropout must be a number in [0, 1)"), ("batch_size=0", "batch_size must be"),
                ("lr_decay=nope", "lr_decay must be null, a number or an object"),
                ("optimizer=nosuch", "optimizer must be one of")]


def cases():
    for command, (_, _, flags) in COMMANDS.items():
        for flag, kind in flags.items():
            for value, expected in BAD[kind]:
                yield pytest.param(command, [flag, value], [flag, expected], id=f"{command} {flag} {value}")
    for command in COMMANDS_READING_A_RUN:
        yield pytest.param(command, ["--run-dir", "{file}"], ["--run-dir", "is a file; name a folder"],
                           id=f"{command} --run-dir FILE")
    for command in ("train", "sweep"):
        for value, expected in BAD_SETTINGS:
            yield pytest.param(command, ["--set", value], [expected], id=f"{command} --set {value}")


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """The empty working folder and another one holding a file."""
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    (other / "file.txt").write_text("x")
    monkeypatch.chdir(work)
    return {"tmp": str(work), "other": str(other), "file": str(other / "file.txt")}


@pytest.mark.parametrize("command, extra, expected", list(cases()))
def test_every_bad_value_is_one_line_exit_2_and_nothing_written(folders, capsys, command, extra, expected):
    main, base, _ = COMMANDS[command]
    argv = [part.format(**folders) for part in base + extra]
    if extra[0] == "--run-dir":  # the bad --run-dir replaces the valid one
        argv = [part.format(**folders) for part in extra] + base[2:]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert stop.value.code == 2 and len(errors) == 1, errors
    assert all(part.format(**folders) in errors[0] for part in expected), errors
    assert "Traceback" not in errors[0]
    assert os.listdir(folders["tmp"]) == [] and os.listdir(folders["other"]) == ["file.txt"]


def test_a_valid_value_of_each_kind_passes_the_same_validators(folders):
    """The validators take what they should: the same values every command takes."""
    from zoo.commands import parsing

    assert parsing.COUNT("3") == 3 and parsing.COUNT_OR_ZERO("0") == 0 and parsing.BATCH_SIZE("65536") == 65536
    assert parsing.SEED("0") == 0 and parsing.SEED("4294967295") == 2**32 - 1 and parsing.PORT("7860") == 7860
    assert parsing.SECONDS("0") == 0.0 and parsing.FOLDER_TO_READ(folders["tmp"]) == folders["tmp"]
    new = os.path.join(folders["tmp"], "a", "b")
    assert parsing.FOLDER_TO_WRITE(new) == new and not os.path.exists(os.path.join(folders["tmp"], "a"))
    assert parsing.REPORT(folders["other"]) == folders["other"]  # a folder: the report's default name inside
    assert os.listdir(folders["tmp"]) == []



# What the zoo says: --quiet and --verbose on every command ---------------------------------------------------
@pytest.fixture
def zoo_logger():
    """The `zoo` logger, its level and handlers put back after the test."""
    import logging

    logger = logging.getLogger("zoo")
    level, handlers = logger.level, list(logger.handlers)
    yield logger
    logger.setLevel(level)
    logger.handlers[:] = handlers


def test_every_command_has_quiet_and_verbose():
    import importlib

    from zoo.commands import COMMANDS
    from zoo.commands.parsing import CommandParser

    for command in COMMANDS:
        parser = importlib.import_module(f"zoo.commands.{command}").build_parser(command)
        shown = parser.format_help()
        assert isinstance(parser, CommandParser) and "--quiet" in shown and "--verbose" in shown, command


@pytest.mark.parametrize("argv, level, fit", [
    ([], "INFO", None), (["--quiet"], "WARNING", 0), (["--verbose"], "DEBUG", None),
    (["--keras-verbose", "2"], "INFO", 2), (["--keras-verbose", "1", "--quiet"], "WARNING", 1),
    (["--verbose", "--keras-verbose", "0"], "DEBUG", 0), (["--keras-verbose", "0", "--verbose"], "DEBUG", 0)])
def test_quiet_and_verbose_set_the_level_and_keep_keras_fit_verbosity(zoo_logger, argv, level, fit):
    import logging

    from zoo.commands import models
    from zoo.commands import train as train_command
    from zoo.commands.messages import TerminalHandler

    args = train_command.build_parser().parse_args(["--model", "esim", *argv])
    assert logging.getLevelName(zoo_logger.level) == level and args.verbose == fit
    assert sum(isinstance(h, TerminalHandler) for h in zoo_logger.handlers) == 1  # one handler, however often parsed
    assert train_command.run_config(args).verbose == fit  # --quiet and a bare --verbose are no settings of the run
    models.build_parser().parse_args({"WARNING": ["--quiet"], "DEBUG": ["--verbose"], "INFO": []}[level])  # no fit
    assert logging.getLevelName(zoo_logger.level) == level


@pytest.mark.parametrize("command, argv, name, value", [
    ("reproduce", ["--verbose", "rocktaschel2016", "--list"], "paper", "rocktaschel2016"),
    ("sweep", ["--verbose", "sweep.yaml", "--dir", "S"], "spec", "sweep.yaml"),
    ("compare", ["--verbose", "runs/a", "runs/b"], "runs", ["runs/a", "runs/b"]),
    ("models", ["--verbose", "esim"], "name", "esim"),
    ("demo", ["--quiet", "runs/esim"], "models", ["runs/esim"])])
def test_verbose_and_quiet_never_read_the_next_word(zoo_logger, command, argv, name, value):
    # issue 58: `nli-zoo reproduce --verbose rocktaschel2016` read the paper as Keras's level
    import importlib

    args = importlib.import_module(f"zoo.commands.{command}").build_parser(command).parse_args(argv)
    assert getattr(args, name) == value and args.messages == argv[0][2:]


def test_reproduce_with_a_bare_verbose_lists_the_paper(zoo_logger, capsys):
    from zoo.commands import reproduce

    reproduce.main(["--verbose", "rocktaschel2016", "--list"])
    assert capsys.readouterr().out.startswith("rocktaschel2016: ")


@pytest.mark.parametrize("argv, expected", [
    (["--quiet", "--verbose"], "--verbose: not allowed with argument --quiet"),
    (["--keras-verbose", "5"], "argument --keras-verbose: invalid choice"),
    (["--verbose", "2"], "argument --verbose: takes no value (the zoo's details); Keras's fit output is "
                         "--keras-verbose 2"),
    (["--verbose=1"], "argument --verbose: takes no value (the zoo's details); Keras's fit output is "
                      "--keras-verbose 1")])
def test_contradicting_message_flags_are_one_line_exit_2(zoo_logger, capsys, argv, expected):
    with pytest.raises(SystemExit) as stop:
        train.main(["--model", "esim", *argv])
    errors = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(errors) == 1 and expected in errors[0], errors


def test_the_commands_handler_prints_each_message_with_its_loggers_prefix_on_the_zoos_stream(zoo_logger, capsys):
    import logging

    from zoo.commands.messages import show_messages

    show_messages(logging.INFO)
    logging.getLogger("zoo.comparison.tuner").info("trial 0 (of 6): model=esim")  # the prefix is the logger's
    logging.getLogger("zoo.runs.datasets").debug("a detail")  # below the level
    logging.getLogger("zoo.training.inputs.vocabulary").info("12 ids")  # a child logger: its own prefix
    logging.getLogger("zoo.commands.evaluate").info("written to R/e.json")  # a command's: the command's name
    logging.getLogger("zoo.runs.manifest").info("runs/esim is used unchecked")  # no prefix: as it is
    logging.getLogger("zoo.data.vectors.progress").info("1.0 MB", extra={"start": "\r", "end": ""})
    logging.getLogger("zoo.data.vectors.progress").warning("done")
    try:
        raise ValueError("bad pair")
    except ValueError:
        logging.getLogger("zoo.demo.app").error("esim failed:", exc_info=True)
    out, err = capsys.readouterr()
    assert out == ("[sweep] trial 0 (of 6): model=esim\n[vocabulary] 12 ids\n[evaluate] written to R/e.json\n"
                   "runs/esim is used unchecked\n")
    assert err.startswith("\r[vectors] 1.0 MB[vectors] done\n[demo] esim failed:\nTraceback (most recent call last):")
    assert err.endswith("ValueError: bad pair\n")


def test_a_command_whose_stdout_is_its_data_says_everything_on_stderr(zoo_logger, capsys, tmp_path):
    import logging

    from zoo.commands import predict
    from zoo.commands.messages import output

    predict.build_parser().parse_args(["--run-dir", str(tmp_path), "--premise", "a", "--hypothesis", "b"])
    logging.getLogger("zoo.inference.predict").warning("the pair: of 1 pairs, 1 empty hypothesis(s)")
    logging.getLogger("zoo.runs.evaluation.note").warning("accuracy near chance")
    output("label: neutral")
    out, err = capsys.readouterr()
    assert out == "label: neutral\n"
    assert err == "[predict] the pair: of 1 pairs, 1 empty hypothesis(s)\n[note] accuracy near chance\n"


def test_quiet_keeps_the_output_warnings_and_errors_and_hides_progress_and_notes(zoo_logger, capsys, tmp_path):
    import logging

    from zoo.commands import evaluate
    from zoo.commands.messages import output
    from zoo.commands.parsing import fail

    evaluate.build_parser().parse_args(["--run-dir", str(tmp_path), "--quiet"])
    logging.getLogger("zoo.inference.evaluate").info("no --dataset or --data-dir: the run's own data, snli_sample")
    logging.getLogger("zoo.inference.evaluate.data").info("test: 1,289 rows")
    logging.getLogger("zoo.inference.evaluate").warning("test: of 40 pairs, 1 premise(s) cut")
    output("accuracy 0.5000 on 40 pairs")
    with pytest.raises(SystemExit):
        fail("evaluate.py", "a damaged file")
    out, err = capsys.readouterr()
    assert out == "[evaluate] test: of 40 pairs, 1 premise(s) cut\naccuracy 0.5000 on 40 pairs\n"
    assert err == "evaluate.py: error: a damaged file\n"


# --quiet on every command: its own output kept, its notes dropped (evaluate, predict, train, sweep, reproduce and
# tune are checked where they run: tests/test_evaluate.py, test_predict.py, test_train.py, test_sweep.py,
# test_reproduce.py, test_tuning.py; compare in test_compare.py, demo in test_demo.py)
def test_quiet_models_and_reproduce_list_print_what_they_exist_to_print(zoo_logger, capsys):
    from zoo.commands import models, reproduce

    for command, argv in ((models, ["esim"]), (models, ["rocktaschel*"]), (reproduce, ["--list"])):
        command.main(argv)
        said = capsys.readouterr()
        command.main([*argv, "--quiet"])
        assert capsys.readouterr() == said and said.out.strip()  # nothing of these is a note


@pytest.mark.large
def test_quiet_export_writes_and_says_nothing(zoo_logger, finished_run_dir, tmp_path, capsys):
    export.main(["--run-dir", finished_run_dir, "--format", "preset", "--out", str(tmp_path / "a")])
    assert f"[export] wrote {tmp_path / 'a'}" in capsys.readouterr().out
    export.main(["--run-dir", finished_run_dir, "--format", "preset", "--out", str(tmp_path / "b"), "--quiet"])
    out, err = capsys.readouterr()
    assert out == "" and "[" not in err and (tmp_path / "b" / "metadata.json").exists()
