"""Limits on what one input file may hold; past them the file is rejected with one line naming the field.

lm-eval's own files are far inside every one of them; they exist so that a
damaged or hostile file is a named rejection, never a crash or a hang.
"""

#: JSON nesting (lm-eval writes at most about 6 levels).
MAX_DEPTH = 100

#: Characters in a task, metric, filter or group name, and in a run or model name.
MAX_NAME_LENGTH = 1_000

#: Digits in a training step (``revision=step...``, ``checkpoint-...``): a BIGINT has 19.
MAX_STEP_DIGITS = 18

#: Bytes in one line of a samples file (DuckDB's JSON reader holds a whole line at once).
MAX_SAMPLE_LINE_BYTES = 64 * 1024 * 1024
#: The longest line a samples file is first read for: DuckDB's own default. Its JSON reader reads a file in
#: buffers of twice this size, one for each of its threads, so that a larger bound would leave a file of
#: less than twice the bound to one thread (and hold that much memory for each). A file with a longer
#: line is read again with MAX_SAMPLE_LINE_BYTES (samples.Replan "long lines").
SAMPLE_READ_LINE_BYTES = 16 * 1024 * 1024
