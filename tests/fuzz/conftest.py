collect_ignore = ["fuzz_archive.py"]  # an atheris harness, run by hand (see its docstring)
