"""Procedures that span rooms, between ``cli`` and the rooms (docs/internals.md): run's
statistics and report after the runs (``postprocess``), attaching a power-meter trace to a
stored run (``attach``), the attached runs a calibration fits to (``calibration``), and
``doctor``'s capability checks (``doctor``). Each room stays ignorant of the others; a
procedure that needs several of them lives here, and the commands call it."""
