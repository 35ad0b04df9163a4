"""Learning what transfers: features, the measured dataset, cost models, their evaluation."""
