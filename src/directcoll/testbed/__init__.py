"""An emulated direct-connect testbed on one machine: real packets through the kernel's TCP/IP, real MPI ranks, a
topology that matters (docs/testbed.md).

:mod:`directcoll.testbed.plan` computes what a topology's testbed is made of; :mod:`directcoll.testbed.netns`
builds it from network namespaces, veth pairs and ``tc netem`` queues, runs MPI ranks in it and removes it.
"""
