"""Storage and versions: everything a command reads or writes on disk, and nothing that runs a model.

The workspace folder and its skill/prompt versions (`workspace`), the SQLite harness log (the
`harness_log` package: its schema, a module per table, and the read layer), the skill store
(`store`), atomic JSON writes and link checks (`atomic`), the single-writer lock
(`writer_lock`), ids, the clock, crash-injection points (`killpoints`) and the run configuration
(`config`, which the provider factory reads too). The bottom room: it imports no other room.
"""
