"""Collective algorithms: each module builds schedules of one family; :mod:`directcoll.registry` lists them."""
