//! The `magrathea` command.

fn main() {}
