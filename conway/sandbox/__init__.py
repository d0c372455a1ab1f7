"""Where commands run: on the machine as it is (`LocalEnvironment`) or inside bubblewrap with a chosen view of
the file system (`BubblewrapEnvironment`), and the disposable desktop a task runs on (`DisposableDesktop`,
its setup steps in `conway.sandbox.setup`). See docs/architecture.md#module-map.
"""
