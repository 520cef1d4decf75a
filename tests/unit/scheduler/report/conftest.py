from tests.unit.scheduler.report.browser import browser

__all__ = ["browser"]
