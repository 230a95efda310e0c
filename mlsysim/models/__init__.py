"""Workload types and the workload registry (data with provenance)."""
