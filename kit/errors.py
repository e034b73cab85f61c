"""The one exception type for mistakes a user can fix; the CLI prints its message without a traceback."""


class KitError(Exception):
    """A problem with the user's input (config, data, recipe, model): the message says what to change."""
