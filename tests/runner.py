"""The command line through its entry point, as the tests run it."""

from mlsysim.cli import main


def run(capsys, *argv):
    """``mlsysim ARGV`` (each argument as text): (exit status, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
