"""`kit doctor` (kit.doctor.doctor) and the checks it shares with bench/gpu_check: each check a fresh process
(kit.doctor.processes), the machine (kit.doctor.machine), the workers (kit.doctor.workers) and the default GPU
route on a tiny random model (kit.doctor.route)."""
