//! The pure Unimem placement core (thesis ch. 3): see submodules.
