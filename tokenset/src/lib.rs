//! grammask-tokenset: vocabularies and token bitmasks.
