"""The interactive chat (`refusals chat`): the agent loop at a terminal.

- `session`: the session state, the turn in flight, the slash commands' effects.
- `commands`: the slash command table (help text, completion, parsing).
- `render`: drawing loop events with rich; provider text sanitised, markup never read.
- `prompt`: the prompt_toolkit input line and the approval question.
- `approval`: write and command tools that ask the user first.
"""
