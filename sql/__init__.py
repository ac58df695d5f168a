"""The migrations, in order (NNNN_name.sql), and schema.sql: a package so the wheel carries them."""
