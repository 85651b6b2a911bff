"""Named systems and workloads from the packaged, sourced data files (:mod:`directcoll.catalog.presets`)."""
