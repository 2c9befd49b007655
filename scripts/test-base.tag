dnnbench-testbase:bookworm-torch2.14.1-cpu
