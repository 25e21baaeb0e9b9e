"""Release readiness: unreleased work and whether publishing is blocked, per repository."""
