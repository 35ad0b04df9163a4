"""ML-guided schedule recommender for Apache TVM: reuse tuned schedules across DNNs on CPUs.

Subpackages in data-flow order (each imports only those before it): see ARCHITECTURE.md.
"""
