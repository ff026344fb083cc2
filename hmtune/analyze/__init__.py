"""hmtune analyze: readers of Paraver traces (ours and Extrae's) and per-site metrics."""
