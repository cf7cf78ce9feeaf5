//! The LLM provider client (being written).
