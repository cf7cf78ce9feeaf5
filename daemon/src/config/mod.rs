//! Session configuration: Swival's keys, files and precedence (being written).
