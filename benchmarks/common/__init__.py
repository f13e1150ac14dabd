"""What the suites share: the bulk data (datagen), timing and memory sampling (measure), the SQL clock
(sql_clock), the throwaway project copy (project), the warm process (warm), the project cdc-init writes
(init_project), and where the figures go (results). Nothing here runs on its own."""
