//! Cross-module tests of the informer (reflector + DeltaFIFO + store + history) driven through the sans-IO API with a fake clock.
