-- Endpoints of a service task (skills.run_service with expose_ports): one object per exposed
-- port, {port, host, host_port, url, forwarder_pid, forwarder_start_time}. The forwarder's pid and
-- start time let a later process check prove that a forwarder found is still this task's.
ALTER TABLE state.skill_tasks ADD COLUMN endpoints jsonb NOT NULL DEFAULT '[]';
