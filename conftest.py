# Under strict nbval, each notebook's cells run a second time in the same kernel
# (tests/notebook_second_run.py): learners re-run cells.
pytest_plugins = ["tests.notebook_second_run"]
